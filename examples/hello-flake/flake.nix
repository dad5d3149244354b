{
  description = "evalbench flake: 100 self-contained derivations with dependencies (no nixpkgs; seed 1)";

  outputs = { self }:
    let
      system = "x86_64-linux";
      count = 100;
      # Deliberate evaluation work in every package, so that a cold
      # evaluation takes real time and the eval cache has something to save.
      work = k: builtins.foldl' (acc: i: acc + (builtins.bitAnd (i * k + acc) 1023)) 0 (builtins.genList (i: i) 1500);
      name = i: "pkg${toString i}";
      # Each package's dependencies, by index (evalbench's shape::generate).
      table = [
        [ ]
        [ 0 ]
        [ 1 ]
        [ 2 ]
        [ 3 ]
        [ 4 ]
        [ 5 ]
        [ 6 ]
        [ 6 7 ]
        [ 6 7 8 ]
        [ 6 7 8 9 ]
        [ 6 7 8 ]
        [ 6 9 10 ]
        [ 6 9 11 ]
        [ 6 7 8 9 12 13 ]
        [ 6 14 ]
        [ 6 7 9 11 12 ]
        [ 6 7 8 9 10 11 12 13 14 15 ]
        [ 6 7 8 9 10 11 12 14 15 17 ]
        [ 6 10 ]
        [ 6 7 8 9 10 19 ]
        [ 6 7 8 9 13 19 ]
        [ 6 7 8 ]
        [ 6 7 9 11 12 ]
        [ 6 7 ]
        [ 6 11 12 14 ]
        [ 6 8 11 17 18 21 ]
        [ 6 8 10 ]
        [ 6 8 17 ]
        [ 6 8 21 ]
        [ 6 24 ]
        [ 6 7 ]
        [ 6 7 8 9 10 18 21 ]
        [ 6 7 8 23 ]
        [ 6 9 ]
        [ 6 7 8 9 10 15 17 19 21 24 27 ]
        [ 6 34 ]
        [ 6 8 ]
        [ 6 7 10 ]
        [ 6 7 11 16 36 ]
        [ 6 7 ]
        [ 6 8 15 18 ]
        [ 6 19 ]
        [ 6 7 9 10 11 13 14 18 24 32 ]
        [ 6 7 20 36 ]
        [ 6 7 8 9 11 ]
        [ 6 7 10 13 33 40 ]
        [ 6 13 22 ]
        [ 6 8 36 41 ]
        [ 6 7 9 29 ]
        [ 6 8 11 22 28 ]
        [ 6 7 8 9 ]
        [ 6 8 9 12 25 ]
        [ 6 7 9 11 13 15 18 21 ]
        [ 6 7 11 25 ]
        [ 6 8 ]
        [ 6 9 11 16 48 ]
        [ 6 7 10 12 13 16 20 22 27 32 ]
        [ 6 7 8 9 11 21 23 29 32 34 56 ]
        [ 6 7 8 10 11 12 14 15 22 24 28 31 37 41 46 ]
        [ 6 7 8 12 17 34 51 56 ]
        [ 6 9 10 11 12 15 27 39 ]
        [ 6 8 12 31 49 ]
        [ 6 7 8 9 11 15 20 30 ]
        [ 6 12 22 31 40 ]
        [ 6 10 11 12 ]
        [ 6 7 8 12 22 45 ]
        [ 6 7 8 9 11 17 28 38 40 44 58 ]
        [ 6 7 ]
        [ 6 52 58 ]
        [ 6 7 8 ]
        [ 6 7 8 10 23 31 ]
        [ 6 13 41 ]
        [ 6 7 9 11 13 20 21 27 41 46 69 ]
        [ 6 8 9 ]
        [ 6 8 11 16 64 ]
        [ 6 7 8 9 21 ]
        [ 6 7 8 11 33 34 62 ]
        [ 6 8 18 36 ]
        [ 6 7 21 23 ]
        [ 6 7 8 9 10 13 16 17 20 27 29 33 36 45 69 ]
        [ 6 7 8 9 10 11 12 17 23 24 35 39 49 56 74 ]
        [ 6 7 8 9 13 17 22 26 29 ]
        [ 6 7 8 10 17 23 25 37 62 ]
        [ 6 7 8 13 31 ]
        [ 6 7 8 12 29 37 ]
        [ 6 23 ]
        [ 6 8 10 11 22 ]
        [ 6 16 23 ]
        [ 6 7 15 22 ]
        [ 6 7 ]
        [ 6 9 25 85 ]
        [ 6 47 50 79 ]
        [ 6 44 ]
        [ 6 7 8 11 23 ]
        [ 6 7 8 9 18 26 32 34 42 ]
        [ 6 21 ]
        [ 6 7 65 81 ]
        [ 6 7 8 9 13 16 29 ]
        [ 6 28 71 ]
      ];
      deps = i: map (j: packages.${name j}) (builtins.elemAt table i);
      mk = i: builtins.derivation {
        name = "hello-${toString i}";
        inherit system;
        builder = "/bin/sh";
        args = [ "-c" "echo ${toString (work i)} $deps > $out" ];
        deps = deps i;
      };
      packages = builtins.listToAttrs (builtins.genList (i: { name = name i; value = mk i; }) count);
    in
    {
      packages.${system} = packages // { default = packages.${name (count - 1)}; };
    };
}
