"""Imported by the fork server for ``tests.faulty_target:PreloadProbe``, never by the probe itself."""
