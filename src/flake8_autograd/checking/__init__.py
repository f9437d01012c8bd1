"""Which rules run on which class or custom op, and a failure of one isolated as a finding."""
