module github.com/wasmsched/wasmsched/plugins/sdk/go

go 1.24
