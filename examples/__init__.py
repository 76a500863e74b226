"""The examples shipped with the package (`nadc examples` lists them and writes one out).

Data files only (``*.nad`` architectures, ``*.toml`` search settings) plus the `make demo`
script; nothing here is imported by the library.
"""
