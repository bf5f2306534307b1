"""The score job's transforms, thin steps over `vlnkit.scoring`: read (`read`), join and score (`score`), and
gather what is written whole (`outputs`). `pipelines.score.build` wires them; docs/composing.md shows them
after other steps."""
