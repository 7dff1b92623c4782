"""The game master: live games, their seats, bot seats, deadlines and replays, over ``server.game`` and
``server.store``. It knows nothing of Flask or Socket.IO: the web layer (``server.web``) is an adapter over
it, and pushes reach clients through the transport it is given."""
