"""The recipe comparison: which pretraining recipe gives the better encoder per hour (README.md)."""
