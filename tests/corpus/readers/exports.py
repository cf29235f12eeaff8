"""Reference-manager exports with every bibliographic field researchers cite by, for the reader and export tests.

They follow what Zotero 7's own BibTeX / RIS / CSL JSON exporters and Better BibTeX (biblatex and BibTeX modes)
write: Zotero's BibTeX escapes `_` in DOIs (`\\_`) and can write `doi` twice (once from the DOI field, once from
"DOI:" in Extra), `month` as a macro (`sep`), `file` with the attachment path; Better BibTeX writes biblatex
`date`/`journaltitle` and, for web pages in BibTeX mode, `howpublished = {\\url{...}}`; RIS splits pages in SP/EP
and dates in DA; CSL-JSON items have Zotero item URIs as ids.

`FIELDS` is what each paper's input says, field by field, as a reader of any format should see it.
"""

from __future__ import annotations

ZOTERO_BIB = r"""
@incollection{haddad_scene_2014,
	address = {Cham},
	title = {Learning {Scene} {Features} from {Street}-{Level} {Imagery}},
	volume = {8693},
	isbn = {978-3-319-10593-2},
	issn = {0302-9743},
	url = {http://link.springer.com/10.1007/978-3-319-10593-2_13},
	doi = {10.1007/978-3-319-10593-2\_13},
	abstract = {We learn scene features from ten million street-level photographs labelled by place category. A network trained on them recognises 205 scene categories with 14\% lower error than object-centric features on three benchmarks.},
	language = {en},
	urldate = {2024-03-01},
	booktitle = {Computer {Vision} – {ECCV} 2014},
	publisher = {Springer International Publishing},
	author = {Haddad, Youssef and Moreau, Camille},
	editor = {Fleet, David and Pajdla, Tomas},
	month = sep,
	year = {2014},
	doi = {10.1007/978-3-319-10593-2\_13},
	note = {Series Title: Lecture Notes in Computer Science},
	pages = {184--199},
	file = {Full Text PDF:/home/ana/Zotero/storage/AB12CD34/Haddad and Moreau - 2014 - Learning Scene Features.pdf:application/pdf},
}

@article{silva_glacier_2023,
	title = {Glacier calving fronts from {Sentinel}-1 radar with uncertainty},
	volume = {17},
	issn = {1994-0416},
	url = {https://tc.copernicus.org/articles/17/2023/tc_17_2023.html},
	doi = {10.5194/tc-17-2023},
	abstract = {We delineate glacier calving fronts in Sentinel-1 radar images with a segmentation network that also predicts its uncertainty. Across 23 Greenland glaciers the median front error is 86 m, and uncertain fronts are flagged for manual review.},
	number = {5},
	urldate = {2024-02-10},
	journal = {The Cryosphere},
	author = {Silva, Beatriz and Østergaard, Søren},
	month = may,
	year = {2023},
	publisher = {Copernicus GmbH},
	pages = {2023--2041},
	file = {Silva - 2023.pdf:/home/ana/Zotero/storage/EF56GH78/Silva - 2023.pdf:application/pdf},
}

@misc{novak_keynote_2023,
	title = {Keynote: the future of remote sensing},
	author = {Novák, Jan},
	year = {2023},
	file = {Snapshot:/home/ana/Zotero/storage/IJ90KL12/keynote.html:text/html},
}
"""  # noqa: E501 - a real export, one line per field however long

BBT_BIBLATEX = r"""
@article{okafor2025reefcount,
  title = {{{ReefCount}}: Counting Reef Fish in Underwater Video},
  shorttitle = {{{ReefCount}}},
  author = {Okafor, Chiamaka and Lindqvist, Erik},
  date = {2025-03-04},
  journaltitle = {Nature Ecology \& Evolution},
  volume = {9},
  number = {3},
  pages = {101--112},
  publisher = {Nature Publishing Group},
  issn = {2397-334X},
  doi = {10.1038/s41559-025-01234-x},
  url = {https://www.nature.com/articles/s41559-025-01234-x},
  urldate = {2026-01-15},
  abstract = {Coral reef monitoring relies on divers counting fish. We release ReefCount, a dataset of 9,000 underwater video clips with per-frame fish counts, and show that a counting transformer trained on it halves the counting error of detection-based methods.},
  langid = {english},
  file = {/home/ana/Zotero/storage/MN34OP56/Okafor and Lindqvist - 2025 - ReefCount.pdf}
}
"""  # noqa: E501 - a real export, one line per field however long

BBT_BIBTEX_WEBPAGE = r"""
@misc{garcia_tidal_2024,
  title = {Tidal Stream Energy Forecasts for {{Brittany}}},
  author = {García, Lucía},
  year = {2024},
  month = nov,
  howpublished = {\url{https://example.org/tidal/forecast_2024?lang=en}},
  urldate = {2024-12-01},
  abstract = {We publish six-hour tidal stream energy forecasts for eleven sites in Brittany, made by a graph neural network over coastal sensor stations, and compare them with persistence forecasts every month.},
  langid = {english}
}
"""  # noqa: E501 - a real export, one line per field however long

ZOTERO_RIS = """TY  - JOUR
TI  - Wildfire smoke plumes from geostationary satellites
AU  - Moreau, Camille
AU  - Haddad, Youssef
T2  - Remote Sensing of Environment
AB  - We segment wildfire smoke plumes in geostationary satellite imagery every ten minutes. A U-Net trained on 4,000 labelled scenes detects plumes with 0.81 intersection over union and gives air-quality agencies warnings two hours earlier than polar-orbiting products.
DA  - 2024/08/01/
PY  - 2024
DO  - 10.1016/j.rse.2024.114200
VL  - 311
IS  - 2
SP  - 114200
EP  - 114214
PB  - Elsevier
SN  - 0034-4257
UR  - https://www.sciencedirect.com/science/article/pii/S0034425724001234
KW  - Wildfire
L1  - file:///home/ana/Zotero/storage/QR78ST90/Moreau - 2024.pdf
ER  - 

TY  - CONF
TI  - A conference talk without abstract
AU  - Novák, Jan
PY  - 2023
ER  - 
"""  # noqa: W291, E501 - a real export: "ER  - " ends a reference (trailing space included), one line per field

ZOTERO_CSL = r"""[
	{
		"id": "http://zotero.org/users/1234567/items/UV12WX34",
		"type": "article-journal",
		"abstract": "We study how much a reasoning model's chain of thought can be shortened before accuracy drops. Pruning the 30% least attended steps keeps accuracy within one point on GSM8K while cutting decoding time by a quarter.",
		"container-title": "Transactions on Machine Learning Research",
		"DOI": "10.1234/tmlr_2025.0042",
		"ISSN": "2835-8856",
		"issue": "4",
		"page": "1-24",
		"publisher": "OpenReview",
		"title": "How Short Can a Chain of Thought Be?",
		"URL": "https://openreview.net/forum?id=abc_123",
		"volume": "2025",
		"author": [
			{"family": "Zhang", "given": "Wei"},
			{"family": "Ngo", "given": "Thi Mai"}
		],
		"accessed": {"date-parts": [["2026", 1, 15]]},
		"issued": {"date-parts": [["2025", 4, 2]]}
	},
	{
		"id": "http://zotero.org/users/1234567/items/YZ56AB78",
		"type": "webpage",
		"title": "A blog post without an abstract",
		"URL": "https://example.org/blog",
		"issued": {"date-parts": [["2024"]]}
	}
]
"""  # noqa: E501 - a real export, one line per field however long

# What each paper's input says (title -> field -> value), in the form the readers give it.
FIELDS: dict[str, dict[str, str]] = {
    "Learning Scene Features from Street-Level Imagery": {
        "authors": "Youssef Haddad, Camille Moreau", "venue": "Computer Vision – ECCV 2014", "year": "2014",
        "month": "9", "volume": "8693", "pages": "184-199", "issn": "0302-9743",
        "publisher": "Springer International Publishing", "doi": "10.1007/978-3-319-10593-2_13",
        "url": "http://link.springer.com/10.1007/978-3-319-10593-2_13"},
    "Glacier calving fronts from Sentinel-1 radar with uncertainty": {
        "authors": "Beatriz Silva, Søren Østergaard", "venue": "The Cryosphere", "year": "2023", "month": "5",
        "volume": "17", "number": "5", "pages": "2023-2041", "issn": "1994-0416", "publisher": "Copernicus GmbH",
        "doi": "10.5194/tc-17-2023", "url": "https://tc.copernicus.org/articles/17/2023/tc_17_2023.html"},
    "ReefCount: Counting Reef Fish in Underwater Video": {
        "authors": "Chiamaka Okafor, Erik Lindqvist", "venue": "Nature Ecology & Evolution", "year": "2025",
        "month": "3", "volume": "9", "number": "3", "pages": "101-112", "issn": "2397-334X",
        "publisher": "Nature Publishing Group", "doi": "10.1038/s41559-025-01234-x",
        "url": "https://www.nature.com/articles/s41559-025-01234-x"},
    "Tidal Stream Energy Forecasts for Brittany": {
        "authors": "Lucía García", "year": "2024", "month": "11",
        "url": "https://example.org/tidal/forecast_2024?lang=en"},
    "Wildfire smoke plumes from geostationary satellites": {
        "authors": "Camille Moreau, Youssef Haddad", "venue": "Remote Sensing of Environment", "year": "2024",
        "month": "8", "volume": "311", "number": "2", "pages": "114200-114214", "issn": "0034-4257",
        "publisher": "Elsevier", "doi": "10.1016/j.rse.2024.114200",
        "url": "https://www.sciencedirect.com/science/article/pii/S0034425724001234"},
    "How Short Can a Chain of Thought Be?": {
        "authors": "Wei Zhang, Thi Mai Ngo", "venue": "Transactions on Machine Learning Research", "year": "2025",
        "month": "4", "volume": "2025", "number": "4", "pages": "1-24", "issn": "2835-8856",
        "publisher": "OpenReview", "doi": "10.1234/tmlr_2025.0042", "url": "https://openreview.net/forum?id=abc_123"},
}

# file name -> (text, titles of the papers with abstracts in it), one file per exporter
FILES = {"Zotero.bib": (ZOTERO_BIB, ["Learning Scene Features from Street-Level Imagery",
                                     "Glacier calving fronts from Sentinel-1 radar with uncertainty"]),
         "BetterBibLaTeX.bib": (BBT_BIBLATEX, ["ReefCount: Counting Reef Fish in Underwater Video"]),
         "BetterBibTeX.bib": (BBT_BIBTEX_WEBPAGE, ["Tidal Stream Energy Forecasts for Brittany"]),
         "Zotero.ris": (ZOTERO_RIS, ["Wildfire smoke plumes from geostationary satellites"]),
         "Zotero.json": (ZOTERO_CSL, ["How Short Can a Chain of Thought Be?"])}


# --- reading exports back, with the libraries alone (not this project's readers) -------------------------------

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


def _given_family(name: str) -> str:
    family, _, given = name.partition(", ")
    return f"{given} {family}".strip() if given else family


def fields_of_bibtex(text: str) -> dict[str, dict[str, str]]:
    """Title -> fields of a BibTeX text; DOI and URL as written (a `\\_` stays), the rest LaTeX-decoded."""
    import bibtexparser
    from bibtexparser import middlewares as mw

    raw = {e.key: e for e in bibtexparser.parse_string(text).entries}
    out = {}
    for e in bibtexparser.parse_string(text, append_middleware=[mw.LatexDecodingMiddleware()]).entries:
        f = {k.lower(): str(v.value).replace("{", "").replace("}", "") for k, v in e.fields_dict.items()}
        month = f.get("month", "").lower()
        url = raw[e.key].fields_dict["url"].value if "url" in raw[e.key].fields_dict else ""
        out[f.get("title", "")] = {k: v for k, v in {
            "authors": ", ".join(_given_family(a.strip()) for a in f.get("author", "").split(" and ") if a.strip()),
            "venue": next((f[v] for v in ("journal", "journaltitle", "booktitle", "howpublished") if v in f), ""),
            "year": f.get("year") or f.get("date", "")[:4],
            "month": str(_MONTHS.index(month) + 1) if month in _MONTHS else month,
            "volume": f.get("volume", ""), "number": f.get("number", ""),
            "pages": f.get("pages", "").replace("--", "-").replace("–", "-"), "issn": f.get("issn", ""),
            "publisher": f.get("publisher", ""),
            "doi": raw[e.key].fields_dict["doi"].value if "doi" in raw[e.key].fields_dict else "",
            "url": url}.items() if v}
    return out


def fields_of_ris(text: str) -> dict[str, dict[str, str]]:
    """Title -> fields of a RIS text (rispy)."""
    import rispy

    out = {}
    for r in rispy.loads(text):
        date = str(r.get("date") or "").split("/")
        pages = "-".join(p for p in (r.get("start_page"), r.get("end_page")) if p)
        out[r.get("title") or r.get("primary_title") or ""] = {k: v for k, v in {
            "authors": ", ".join(_given_family(a) for a in r.get("authors") or []),
            "venue": r.get("secondary_title") or r.get("journal_name") or "", "year": str(r.get("year") or ""),
            "month": str(int(date[1])) if len(date) > 1 and date[1].isdigit() else "",
            "volume": r.get("volume") or "", "number": r.get("number") or "", "pages": pages,
            "issn": r.get("issn") or "", "publisher": r.get("publisher") or "", "doi": r.get("doi") or "",
            "url": (r.get("urls") or [""])[0]}.items() if v}
    return out


def fields_of_csl(text: str) -> dict[str, dict[str, str]]:
    """Title -> fields of a CSL-JSON text."""
    import json

    out = {}
    for item in json.loads(text):
        parts = (item.get("issued") or {}).get("date-parts") or [[]]
        out[item.get("title", "")] = {k: v for k, v in {
            "authors": ", ".join(a.get("literal") or f"{a.get('given', '')} {a.get('family', '')}".strip()
                                 for a in item.get("author") or []),
            "venue": item.get("container-title") or "", "year": str(parts[0][0]) if parts[0] else "",
            "month": str(parts[0][1]) if len(parts[0]) > 1 else "", "volume": item.get("volume") or "",
            "number": item.get("issue") or "", "pages": item.get("page") or "", "issn": item.get("ISSN") or "",
            "publisher": item.get("publisher") or "", "doi": item.get("DOI") or "",
            "url": item.get("URL") or ""}.items() if v}
    return out


def kept(expected: dict[str, str], got: dict[str, str] | None) -> list[str]:
    """The fields of the input that came back with the same value."""
    got = got or {}
    return [f for f, v in expected.items() if got.get(f) == v]
