"""The benchmark suite behind ``make bench`` (``python -m minicompile bench``)."""
