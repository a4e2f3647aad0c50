"""One page through an engine, a request group of pages, and the checks of an answer.

    page.py     one page: the engine's reading, its checks, the temperature ladder, the flagged fallback
    group.py    several pages of one document in one request
    quality.py  the checks an answer passes before it is kept
"""
