"""One module per job: its flags, its input checks, its wiring of transforms; and the job template they share
(command, flags, profiles, runners, job, provenance, publishing, verdict). No domain logic here."""
