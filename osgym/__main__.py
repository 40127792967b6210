from osgym.cli import main

main()
