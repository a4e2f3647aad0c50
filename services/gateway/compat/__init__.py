"""Drop-in routes for the clients people already run: the Unstructured partition API and LlamaParse.

Each route calls pagemill's own `/v1/documents` routes in-process with the caller's key (`inproc`), so tenancy,
limits, fair share and errors are the API's own; only the request and answer shapes are translated.
"""
