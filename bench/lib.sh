# Shell helpers the bench scripts share; source it from the repository's top.

# free_port prints a TCP port on 127.0.0.1 that nothing listens on.
free_port() {
	local p
	for _ in $(seq 50); do
		p=$((20000 + RANDOM % 40000))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
	done
	exit 1
}
