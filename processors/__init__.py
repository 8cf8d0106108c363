"""coffea processors of the rosenblatt studies."""
