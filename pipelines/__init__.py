"""One module per job: options, reading, wiring transforms, writing. No domain logic here."""
