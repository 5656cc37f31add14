package export

import (
	"fmt"
	"io"
	"strings"
	"testing"
)

// BenchmarkBuildAndPack measures the in-process half of an export: trees,
// hashes, signatures and the pack stream for 1 000 issues of 10 comments.
func BenchmarkBuildAndPack(b *testing.B) {
	body := strings.Repeat("the lease expires before the worker pushes ", 5)
	var recs [][]file
	for i := 0; i < 1000; i++ {
		fs := []file{{path: IssueFile, data: []byte(fmt.Sprintf(`{"id":"%040x","body":%q}`, i, body))}}
		for c := 0; c < 10; c++ {
			fs = append(fs, file{path: fmt.Sprintf("comments/%06d-%040x.json", c, i*10+c), data: []byte(fmt.Sprintf(`{"n":%d,"body":%q}`, c, body))})
		}
		recs = append(recs, fs)
	}
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		var objs []object
		for _, fs := range recs {
			tree, o := buildTree(fs)
			p := commitPayload(tree, "", 1, "x\n")
			sig, _ := sshSign(signingKey, p)
			objs = append(objs, o...)
			objs = append(objs, newObject(typeCommit, withSignature(p, sig)))
		}
		if err := writePack(io.Discard, objs); err != nil {
			b.Fatal(err)
		}
	}
}
