"""`qgate run`: the pipeline (pipeline.py) and the stages, context and report it is made of."""
