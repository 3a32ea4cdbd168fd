"""Layer 1, the contract: candidates and their validation, the cost models, ranking and packing
(:mod:`.builder` over the Rust engine, :mod:`.reference` in pure Python, the specification),
the prompt section (:mod:`.composer`), digests, provenance, traces, limits, errors, secret
redaction and safe output. Imports nothing from the layers above it."""
