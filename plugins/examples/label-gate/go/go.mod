module label-gate

go 1.24
