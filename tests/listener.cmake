# Tests of in-process listeners (<evring/listener.h>, producer/listener.c).
# Public API only, through the shared library (as test_session).
evr_unit(test_listener LIBS evring)
