"""The simulator: ground truth for the observer and the plant for closed-loop control."""
