package namespace_test

import (
	"fmt"

	"github.com/mnemohq/mnemo/namespace"
)

func ExampleResolve() {
	self := namespace.MustParse("agent://bob")
	for _, arg := range []string{"", "subagent/task-123", "team://core"} {
		a, _ := namespace.Resolve(self, arg)
		fmt.Println(a)
	}
	// Output:
	// agent://bob
	// agent://bob/subagent/task-123
	// team://core
}

func ExampleResolver() {
	r, err := namespace.NewResolver([]namespace.Rule{
		{Mode: namespace.ModeMap, Match: "agent:main", Principal: "alice"},
		{Mode: namespace.ModeRegex, Match: `^agent:([^:]+):`, Principal: "$1"},
	}, namespace.MustParse("agent://default"))
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Resolve("agent:main"))
	fmt.Println(r.Resolve("agent:Research Bot:42"))
	fmt.Println(r.Resolve("cli"))
	// Output:
	// agent://alice
	// agent://research-bot
	// agent://default
}
