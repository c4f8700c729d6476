"""(being written)"""

CASES = []
