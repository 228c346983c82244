"""Training algorithms behind `emulator train`; each module registers itself with emulator.training.register_algo."""
