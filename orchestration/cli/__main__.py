from orchestration.cli import console_main

console_main()
