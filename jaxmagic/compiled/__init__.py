"""What XLA made of a traced call: the optimized HLO and its source lines, memory, profiles,
collectives and rematerialisation.
"""
