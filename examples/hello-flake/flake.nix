{
  description = "evalbench flake: 100 self-contained derivations with dependencies (no nixpkgs)";

  outputs = { self }:
    let
      system = "x86_64-linux";
      count = 100;
      # Deliberate evaluation work in every package, so that a cold
      # evaluation takes real time and the eval cache has something to save.
      work = k: builtins.foldl' (acc: i: acc + (builtins.bitAnd (i * k + acc) 1023)) 0 (builtins.genList (i: i) 1500);
      name = i: "pkg${toString i}";
      deps = i: if i == 0 then [ ] else [ packages.${name (i / 2)} packages.${name (i - 1)} ];
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
