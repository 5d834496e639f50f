"""Research projects on top of the library (Model Garden's convention).

The library never imports them (tests/test_architecture.py checks).
"""
