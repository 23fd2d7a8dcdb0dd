"""arraybench's tests, a folder for each stage of the package they test (docs/architecture.md's stages),
`project/` for the whole repository (end to end, the docs, packaging, the layout's rule). `conftest.py`
holds the fixtures every folder shares and declares the tiers; `helpers/` the code tests share,
`fixtures/` their input files, `fakes/` stand-ins for frameworks this machine lacks."""
