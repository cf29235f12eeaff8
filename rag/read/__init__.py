"""Reading: a learned model that scores how well a passage answers a question (rag/read/model.py), and the
passages it reads (rag/read/passages.py: a full text's paragraphs with their section heading, an abstract's
sentences with their paper's title). Between the index (which finds candidates) and the answer stage (which
quotes the best of them)."""
