"""`intercore assess`: one system description through every stage (channels, their validation
on the host, the interference matrix, the user's programs' regions measured and predicted,
Algorithm 1, Solo / Interference / Protected), each step resumable, into a certification
dossier (docs/assess.md). Start reading at pipeline.py; the dossier is built by dossier.py."""
