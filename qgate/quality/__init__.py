"""Quality suites (math, recall, divergence, lm-eval), statistics and gates."""
