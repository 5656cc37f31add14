# sshd's AuthorizedKeysCommand for collab, answered from the key index
# beside the database (internal/keyindex) by awk, which starts in a third
# of the time of the lean Go binary on the machines measured (sshd runs the
# command twice per login). It prints what `collab-hook keys-command`
# prints, byte for byte (keyindex's TestAwk checks), and hands the key to
# collab-hook-fast keys-command, which asks the database, wherever the
# index cannot answer: missing, unreadable, incomplete, a bad line.
#
#   AuthorizedKeysCommand /usr/bin/awk -v bin=LIBEXEC -v root=ROOT -v u=%u -v t=%t -v k=%k -f LIBEXEC/keys-command.awk
#
# bin is the directory of collab-hook and collab-hook-fast. Only BEGIN runs:
# awk reads no input of its own, so a missing index is not awk's error.
BEGIN {
	# install.sh writes both unquoted into sshd_config, where nothing else
	# would survive; unquoted they also need no shell quoting here.
	if (bin !~ /^\/[A-Za-z0-9\/._-]*$/ || root !~ /^\/[A-Za-z0-9\/._-]*$/) {
		print "collab keys-command.awk: bin and root must be absolute paths of [A-Za-z0-9/._-]" > "/dev/stderr"
		exit 1
	}
	# sshd's %t is a key type name and %k base64. Anything else is not a
	# key the index can hold (keyindex.Lookup finds nothing for a blank),
	# and must not reach the shell of the fallback below.
	if (t !~ /^[A-Za-z0-9@._+\/=-]+$/ || k !~ /^[A-Za-z0-9+\/=]+$/ || u !~ /^[A-Za-z0-9._-]+$/)
		exit 0

	file = root "/collab.db.keys"
	header = "# collab key index v1: TYPE BLOB PRINCIPAL; written by collab-hook, do not edit"
	n = 0; first = ""; last = ""; name = ""; bad = 0
	while ((r = (getline line < file)) > 0) {
		if (++n == 1) {
			first = line
			if (first != header)
				break
			continue
		}
		last = line
		if (name != "" || bad)
			continue
		c = split(line, f, " ")
		if (f[1] == t && f[2] == k) {
			# As access.CheckName: what collab-hook would refuse, it says.
			if (c == 3 && f[3] ~ /^[a-z0-9][a-z0-9._-]*$/ && length(f[3]) <= 64 && f[3] != "local" && f[3] != "unknown")
				name = f[3]
			else
				bad = 1
		}
	}
	close(file)
	if (r != 0 || first != header || n < 2 || last != "# end" || bad) {
		fflush()
		exit system("exec " bin "/collab-hook-fast --root " root " keys-command " u " " t " " k)
	}
	if (name == "")
		exit 0
	cmd = bin "/collab-hook"
	if (root != "/srv/collab")
		cmd = cmd " --root " root
	printf "command=\"%s serve --as %s\",restrict %s %s\n", cmd, name, t, k
}
