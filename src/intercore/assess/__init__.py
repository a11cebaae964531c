"""`intercore assess`: one system description through every stage (channels, their validation
on the host, the interference matrix, Algorithm 1, Solo / Interference / Protected), each
step resumable, into a certification dossier (docs/assess.md)."""
