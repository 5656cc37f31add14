package submit

import "strings"

// AddTrailers returns msg with each of trailers ("Key: value") in its
// last paragraph, as git interpret-trailers would put them: appended to a
// last paragraph that already is all trailers (so Patch: stays in the last
// paragraph, where the merge scan reads it), else as a new paragraph. A
// trailer already there is not repeated. The result ends with one newline.
// Lines of msg past its subject that carry a footer only the forge writes
// (ForgeOnly) are dropped first: the author's "Reviewed-by: bob" would
// otherwise read exactly like the forge's own.
func AddTrailers(msg string, trailers []string) string {
	msg = strings.TrimRight(dropForgeOnly(strings.ReplaceAll(msg, "\r\n", "\n")), " \t\n")
	if len(trailers) == 0 {
		return msg + "\n"
	}
	paras := strings.Split(msg, "\n\n")
	last := paras[len(paras)-1]
	have := map[string]bool{}
	inTrailers := len(paras) > 1 && isTrailerBlock(last)
	if inTrailers {
		for _, l := range strings.Split(last, "\n") {
			have[strings.TrimSpace(l)] = true
		}
	}
	var add []string
	for _, t := range trailers {
		if !have[t] {
			have[t] = true
			add = append(add, t)
		}
	}
	if len(add) == 0 {
		return msg + "\n"
	}
	sep := "\n\n"
	if inTrailers {
		sep = "\n"
	}
	if msg == "" {
		sep = ""
	}
	return msg + sep + strings.Join(add, "\n") + "\n"
}

// ForgeOnly are the keys of the footers a submit writes that nobody else
// may: the forge vouches for them (who approved, where it was reviewed).
// Patch: is not one of them: it is the author's own identity trailer.
var ForgeOnly = [...]string{"Reviewed-on", "Reviewed-by"}

// dropForgeOnly removes every line after the subject that reads as a
// ForgeOnly footer, whatever its case, indentation (git merge --squash
// indents) or space before the colon, and the blank lines that leaves
// doubled.
func dropForgeOnly(msg string) string {
	lines := strings.Split(msg, "\n")
	out := lines[:1]
	dropped := false
	for _, l := range lines[1:] {
		key, _, ok := strings.Cut(strings.TrimLeft(l, " \t"), ":")
		if ok && isForgeOnly(strings.TrimRight(key, " \t")) {
			dropped = true
			continue
		}
		if dropped && l == "" && out[len(out)-1] == "" {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

func isForgeOnly(key string) bool {
	for _, k := range ForgeOnly {
		if strings.EqualFold(key, k) {
			return true
		}
	}
	return false
}

// isTrailerBlock reports whether every line of p is a trailer (or a
// continuation line of one).
func isTrailerBlock(p string) bool {
	lines := strings.Split(p, "\n")
	for i, l := range lines {
		if i > 0 && (strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t")) {
			continue
		}
		if !isTrailerLine(l) {
			return false
		}
	}
	return true
}

// isTrailerLine reports whether l starts "Key: " (a token of letters,
// digits and dashes, then a colon and a space or tab).
func isTrailerLine(l string) bool {
	key, rest, ok := strings.Cut(l, ":")
	if !ok || key == "" || key[0] == '-' || rest == "" || (rest[0] != ' ' && rest[0] != '\t') {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// subjectLine is the first line of a title, for a message's subject.
func subjectLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(s)
}
