trace(toInt("3") + 1, toFloat("2.5") * 2.0, fromInt(4) + "!", itof(3) / 2.0, toString(1.5));
