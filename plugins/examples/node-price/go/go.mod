module node-price

go 1.24
