"""Test data written in each agent's own format, and the ready-made scenes more than one test module
uses: a test module imports them from here (or from tests/support.py, tests/tui_support.py), never
from another test module (tests/house/test_imports.py)."""
