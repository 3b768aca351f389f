"""The demo's scripted coding agent (scripted_agent.py), started as an external agent by the demo's coding runs."""
