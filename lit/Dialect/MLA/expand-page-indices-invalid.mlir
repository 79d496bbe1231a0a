// RUN: mlagen-opt %s --split-input-file --verify-diagnostics

// expected-error @+1 {{attribute 'page_size' failed to satisfy constraint: 32-bit integer attribute whose value is in [1, 4096]}}
mla.expand_page_indices @e page_size = 0

// -----

// expected-error @+1 {{attribute 'page_size' failed to satisfy constraint}}
mla.expand_page_indices @e page_size = 4097

// -----

// The custom form cannot say it (launch follows arch): the generic form can.
// expected-error @+1 {{'launch' requires 'arch': a launch is prepared for a target}}
"mla.expand_page_indices"() <{sym_name = "e", page_size = 64 : i32, launch = #mla.launch<entry = "mlagen_expand_page_indices", threads = 256, shared_bytes = 0>}> : () -> ()
