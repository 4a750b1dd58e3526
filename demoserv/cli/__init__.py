"""The command line: ``demoserv`` and its commands (``commands``). The top layer: it may
import every package; nothing imports it but the package's face (``flask --app
demoserv`` finds the commands through ``create_app``)."""
