"""The webhook receiver and the pages it serves: verify, route and enqueue deliveries; DBOM, setup and error pages."""
