"""The Reader agent: papers in, tagged design ideas into the knowledge base (see reader.py)."""
