"""Korean retrieval quality benchmark: data set generator and runner."""
