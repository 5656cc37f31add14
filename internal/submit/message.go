package submit

import "strings"

// AddTrailers returns msg with each of trailers ("Key: value") in its
// last paragraph, as git interpret-trailers would put them: appended to a
// last paragraph that already is all trailers (so Patch: stays in the last
// paragraph, where the merge scan reads it), else as a new paragraph. A
// trailer already there is not repeated. The result ends with one newline.
func AddTrailers(msg string, trailers []string) string {
	msg = strings.TrimRight(strings.ReplaceAll(msg, "\r\n", "\n"), " \t\n")
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

// Footers are the trailers a submit writes into every commit it makes:
// Patch: ID (kept, or added where the commit lacks it), Reviewed-on: the
// patch's page, and one Reviewed-by: per approver, as Gerrit does.
func Footers(patchID, url string, approvers []string) []string {
	out := []string{"Patch: " + patchID}
	if url != "" {
		out = append(out, "Reviewed-on: "+url)
	}
	for _, a := range approvers {
		out = append(out, "Reviewed-by: "+a)
	}
	return out
}

// subjectLine is the first line of a title, for a message's subject.
func subjectLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(s)
}
