() => {
  // Citation chips, per-answer evidence, copy/BibTeX and the phone drawer. One delegated listener, so it keeps
  // working when Gradio re-renders the chat and the evidence panel.
  if (window.__papersUI) return;
  window.__papersUI = true;
  const narrow = () => window.matchMedia("(max-width: 768px)").matches;
  const panel = () => document.querySelector("#evidence");
  // Gradio scopes custom CSS inside .gradio-container, so the drawer state is a class on the column itself.
  const drawer = () => document.querySelector("#evidence-col");
  const drawerOpen = () => { const d = drawer(); return !!d && d.classList.contains("open"); };
  const setDrawer = (open) => {
    const d = drawer();
    if (d) d.classList.toggle("open", open);
    const t = document.querySelector("#evidence-toggle");
    if (t) {
      t.textContent = open ? "Hide evidence" : "Evidence";
      t.classList.toggle("open", open);
    }
  };

  // On a phone the drawer scrolls: the card's header goes to its top, then, if the quote is still below what
  // the drawer shows, just far enough down to show the quote.
  function revealInDrawer(card) {
    const d = drawer();
    if (!d) return;
    card.scrollIntoView({ behavior: "auto", block: "start" });
    const mark = card.querySelector("mark");
    if (!mark) return;
    // Measured against the drawer itself: it may still be sliding in (its transform moves both alike).
    const box = d.getBoundingClientRect();
    const over = mark.getBoundingClientRect().bottom - (box.bottom - 16);
    if (over > 0) d.scrollTop += over;  // the header scrolls away only when the card is taller than the drawer
  }

  function showTurn(turn) {
    const root = panel();
    if (!root) return null;
    root.querySelectorAll(".turn-evidence").forEach((el) => el.classList.toggle("active", el.dataset.turn === turn));
    return root;
  }

  function sourceText(turn, kind) {
    const root = panel();
    const el = root && root.querySelector(`.turn-evidence[data-turn="${turn}"] textarea.copy-source.${kind}`);
    return el ? el.value : "";
  }

  async function copyText(text, button) {
    try {
      await navigator.clipboard.writeText(text);
    } catch (e) {  // no clipboard API (plain http on another host): the old way
      const area = document.createElement("textarea");
      area.value = text;
      document.body.appendChild(area);
      area.select();
      document.execCommand("copy");
      area.remove();
    }
    const label = button.textContent;
    button.textContent = "Copied";
    setTimeout(() => { button.textContent = label; }, 1500);
  }

  document.addEventListener("click", (ev) => {
    const chip = ev.target.closest("a.cite-chip");
    if (chip) {
      ev.preventDefault();
      // The chat's sanitiser keeps href but not data-* attributes: the target is "#ev-<answer>-<n>".
      const m = /^#ev-(\d+)-(\d+)$/.exec(chip.getAttribute("href") || "");
      if (!m) return;
      const turn = m[1], n = m[2];
      const root = showTurn(turn);
      if (!root) return;
      if (narrow()) setDrawer(true);
      root.querySelectorAll(".evidence-card.flash").forEach((c) => c.classList.remove("flash"));
      const card = root.querySelector(`.evidence-card[data-turn="${turn}"][data-n="${n}"]`);
      if (card) {
        card.classList.add("flash");
        if (narrow()) revealInDrawer(card);
        else card.scrollIntoView({ behavior: "smooth", block: "center" });
      }
      return;
    }
    const tool = ev.target.closest("[data-action]");
    if (!tool) return;
    const action = tool.dataset.action, turn = tool.dataset.turn;
    if (action === "toggle-evidence") setDrawer(!drawerOpen());
    else if (action === "copy-answer") copyText(sourceText(turn, "plain"), tool);
    else if (action === "copy-bibtex") copyText(sourceText(turn, "bibtex"), tool);
    else if (action === "download-bibtex") {
      const url = URL.createObjectURL(new Blob([sourceText(turn, "bibtex")], { type: "application/x-bibtex" }));
      const a = document.createElement("a");
      a.href = url;
      a.download = `references-${Number(turn) + 1}.bib`;
      document.body.appendChild(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 1000);
    }
  });
}
