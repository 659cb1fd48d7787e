"""The server: the FastAPI application, its REST and WebSocket routers, the page it serves, and who may call it."""
