module namespace-quota

go 1.24
