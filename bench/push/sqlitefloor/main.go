// Command sqlitefloor does nothing but link modernc.org/sqlite, the
// driver every process that opens collab's database links: bench/push
// starts it beside an empty Go program to show what linking the driver
// alone costs a process's start, the floor under serve's.
package main

import _ "modernc.org/sqlite"

func main() {}
