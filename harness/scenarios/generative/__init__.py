"""Generative testing: fault schedules drawn by Hypothesis, searched, shrunk, and soaked.

``generate`` holds the strategies, the generated world and the profiles; ``explore`` plays
drawn schedules as scenarios and writes the smallest failure as a scenario file (``tomlout``);
``soak`` plays chapter after chapter against one long-lived world and ``soakreport`` writes
its report. All of it runs on the engine (the runner, the player), judged by ``checks``.
"""
