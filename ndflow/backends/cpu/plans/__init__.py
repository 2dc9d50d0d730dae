"""Per-call plans of the cpu backend's compiled convolutions and pooling: ``conv`` keeps a call's shape-only work
per call signature, ``bound`` binds a plan's C module call for the flags of the moment."""
