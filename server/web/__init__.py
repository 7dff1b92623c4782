"""The web layer, the only code that knows Flask: the app factory, its services, the Socket.IO and REST
handlers, auth, the lobby, admin, replay, item catalogue and browser pages, exports."""
