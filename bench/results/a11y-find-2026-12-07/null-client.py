"""Run inside a replica as its user: a D-Bus client of every AT-SPI application that asks each one its name and
then only sleeps (no match rules, so nothing is sent to it). Tried and dropped (docs/design-notes.md)."""

import time

from gi.repository import Gio, GLib

session = Gio.bus_get_sync(Gio.BusType.SESSION, None)
address = session.call_sync("org.a11y.Bus", "/org/a11y/bus", "org.a11y.Bus", "GetAddress", None,
                            GLib.VariantType("(s)"), Gio.DBusCallFlags.NONE, -1, None).unpack()[0]
bus = Gio.DBusConnection.new_for_address_sync(
    address, Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION, None,
    None)
apps = bus.call_sync("org.a11y.atspi.Registry", "/org/a11y/atspi/accessible/root", "org.a11y.atspi.Accessible",
                     "GetChildren", None, None, Gio.DBusCallFlags.NONE, -1, None).unpack()[0]
for name, path in apps:
    try:
        answer = bus.call_sync(name, path, "org.freedesktop.DBus.Properties", "Get",
                               GLib.Variant("(ss)", ("org.a11y.atspi.Accessible", "Name")), None,
                               Gio.DBusCallFlags.NONE, 2000, None)
        print(name, answer.unpack(), flush=True)
    except GLib.Error as exc:
        print(name, "failed:", exc, flush=True)
time.sleep(3600)
