"""A read-only web dashboard over live and finished run stores (``evoforge dashboard``).

``data`` reads a run store (SQLite, ``mode=ro``) and aggregates its figures on the server;
``pages`` renders escaped HTML; ``server`` is the Starlette app with its security headers;
``static/`` holds the vendored uPlot charting library and the page script. Needs the
``dashboard`` extra (``pip install 'evoforge[dashboard]'``).
"""
