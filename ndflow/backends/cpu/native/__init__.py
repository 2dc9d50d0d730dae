"""The cpu backend's native side: the optional C module (``csrc/``, built as ``_gemm``) and the Python that loads
and drives it (``native_split``), the work split over ndflow's own threads (``parallel``), and glibc's malloc
thresholds (``malloc_tuning``)."""
