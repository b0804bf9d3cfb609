"""One-question studies: each trains or measures what one question needs and writes one result file.

Credit baselines against paired credit, the bounds of an explorer with memory in the trials
rooms, what the experience keys cost SB3's default policy, where the actor's extra wall-clock
goes, what a lagging read replica changes in learning, run scope's defaults on a new task.
"""
