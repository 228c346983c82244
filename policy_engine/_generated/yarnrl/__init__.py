"""Generated from proto/ by tools/genproto.py (`make proto`); do not edit."""
