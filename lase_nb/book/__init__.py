"""The book: executing the chapters, the lecturer's clock, the HTML pages, the panels and widgets.

A layer above the method (``lase_nb``'s flat modules), which never imports it; chapters import
its panels and widgets (``tests/test_layout.py`` holds the direction). The command line
(``lase_nb.cli``: ``lase-nb notebooks``, ``lase-nb book``) is the one entry point that calls it.

==========  ==================================================================================
module      what it holds
==========  ==================================================================================
execution   executing the collection with papermill (kernels, chapters at once, recordings read)
budget      the book's cell tags, the chapter budget, the lecturer's clock, the seminar path
html        the HTML book and the seminar path's pages (MathML, offline): ``build_book``
panels      kernel-free slider panels (Bokeh, BokehJS inlined)
widgets     what the slider panels share; ``live_session`` (widgets only in a live Jupyter)
==========  ==================================================================================
"""
